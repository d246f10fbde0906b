dupkeys_nested:
  x:
    k: 1
dupkeys_nested:
  y: 2
