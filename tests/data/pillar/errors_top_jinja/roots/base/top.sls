base:
  '*':
    - ok
{% if grains['os_family'] == 'Debian' %}
  'web01':
    - ok
{% endif
