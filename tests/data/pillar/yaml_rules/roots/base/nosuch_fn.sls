nosuch_fn:
  x: {{ salt['no.such']() }}
