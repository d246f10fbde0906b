include:
  - 'dev:devstuff'
saltenv_form: True
