base:
  '*':
    - apache
    - apache.relative
    - apache.sub.deeper
    - loaders
    - fragments
