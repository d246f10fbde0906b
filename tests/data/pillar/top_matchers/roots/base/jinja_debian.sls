hit:
  jinja_debian: True
