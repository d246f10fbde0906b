include:
  - bad_jinja
  - ok
includes_bad: True
