toplevel_helper: True
