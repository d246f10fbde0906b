include:
  - 'glob.*'
globber: True
