"""``quadrants.lang._template_mapper``: kept for programs that reach into it.

In the reference this module maps a kernel's template arguments to its compiled
specialisations. Programs written against the reference only touch the module object itself
(Genesis assigns ``quadrants.lang._template_mapper.__builtins__["__debug__"]``), so it exists
here as a module and nothing more: specialisation keys are built in quadrants/_kernel.py
(``_template_key``).
"""
