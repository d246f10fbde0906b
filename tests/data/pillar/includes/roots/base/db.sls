toplevel_db: True
