undefined:
  x: {{ nosuch_var }}
