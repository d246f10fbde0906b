tmpl2:
  name: {{ name }}
  port: {{ port | default('noport') }}
