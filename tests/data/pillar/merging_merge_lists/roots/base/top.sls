base:
  '*':
    - a
    - b
  'web01':
    - c
dev:
  'db01':
    - from_base_top
