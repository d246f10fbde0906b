tmpl3:
  sls: {{ sls }}
