base:
  '*':
    - common
    - users
    - nginx
{% if grains.get('role') == 'app' %}
    - app
{% endif %}
  'os_family:Debian':
    - match: grain
    - apt
  'G@role:app and bench*':
    - monitoring
