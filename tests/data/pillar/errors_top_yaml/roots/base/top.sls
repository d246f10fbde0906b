base:
  '*':
    - ok
  '*':
    - ok
