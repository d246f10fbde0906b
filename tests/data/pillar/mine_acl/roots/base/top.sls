base:
  '*':
    - mine
  'role:web':
    - match: grain
    - web
