"""The kernel forms of field methods: what `field.method(...)` means inside a kernel.

The compiler looks a method up as the field's attribute `_qd_kernel_<name>` (a @qd.func taking
the field first; csrc/frontend/lower_expr.c, field_method). A method without one runs in Python
scope only, and calling it in a kernel is a compile error, as in the reference.
"""

import quadrants as qd


@qd.func
def fill(field: qd.template(), value: qd.template()):
    """`field.fill(value)` in a kernel: every element set to `value` (a scalar fills every entry
    of a vector/matrix field's elements). At the kernel's top level it is a parallel loop."""
    for I in qd.grouped(field):
        field[I] = value
