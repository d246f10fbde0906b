include:
  - nosuch
missing_inc: True
