#!yaml
shebang_yaml:
  not_rendered: "{{ grains['id'] }}"
  also: '{% if 1 %}x{% endif %}'
