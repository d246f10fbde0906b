tmpl:
  port: {{ port }}
  name: {{ name }}
  port_is_number: {{ port is number }}
