include:
  - cyc_a
cyc_b: True
