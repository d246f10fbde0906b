base:
  '*':
    - main
    - app
    - cyc_a
    - globber
    - withdefaults
    - missing_inc
    - bad_include_form
    - saltenv_form
  'G@role:web':
    - match: compound
    - byrole
