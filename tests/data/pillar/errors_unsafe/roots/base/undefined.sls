undefined:
  x: {{ nosuch }}
