{% from 'apache/map.jinja' import apache, role_info with context %}
{% import_text 'apache/motd.txt' as motd %}
apache:
  merged: {{ apache | json }}
  role_info: {{ role_info | json }}
  motd: {{ motd | json }}
