undefined_attr:
  x: {{ grains.nosuch }}
