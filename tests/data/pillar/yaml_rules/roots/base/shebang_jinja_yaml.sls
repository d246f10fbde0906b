#!jinja|yaml
shebang_jinja_yaml:
  id: {{ grains['id'] }}
