app_sub:
  sls: {{ sls }}
