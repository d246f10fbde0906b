sandbox:
  x: {{ (1).__class__ }}
