base:
  '*':
    - vars
    - control
    - filters
    - hashes
    - app
    - app.deep
    - seen
