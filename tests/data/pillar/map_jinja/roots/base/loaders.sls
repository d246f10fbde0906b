{% load_yaml as ly %}
a: 1
b: [x, y]
c: {{ grains['os_family'] }}
{% endload %}
{% load_json as lj %}
{"j": [1, 2, {"k": "{{ grains['id'] }}"}]}
{% endload %}
{% load_text as lt %}
plain text for {{ grains['id'] }}
{% endload %}
{% set from_str = "x: [1, 2]" | load_yaml %}
loaders:
  yaml: {{ ly | json }}
  json: {{ lj | json }}
  text: {{ lt | json }}
  yaml_filter: {{ from_str | json }}
