{% import_yaml 'users/defaults.yaml' as defaults %}
users:
{% for name, uid in defaults.users.items() %}
  {{ name }}:
    uid: {{ uid }}
    shell: {{ defaults.shell }}
    groups: [{{ 'sudo' if name in defaults.admins else 'users' }}]
{% endfor %}
