include:
  - cyc_b
cyc_a: True
