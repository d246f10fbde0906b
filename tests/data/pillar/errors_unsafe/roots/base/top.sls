include:
  - nosuch_top
  - bad_top
base:
  '*':
    - ok
    - missing
    - bad_jinja
    - bad_yaml
    - undefined
    - includes_bad
    - list
    - 'nomatch.*'
  'db01':
    - nosuch.deep
nosuchenv:
  '*':
    - whatever
