base:
  'web02':
    - from_extra_top
