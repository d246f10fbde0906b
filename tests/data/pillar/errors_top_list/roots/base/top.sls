- base:
    '*':
      - ok
