{% set region = grains.get('region', 'eu') %}
common:
  region: {{ region }}
  ntp_servers: {{ ['0.pool', '1.pool', '2.pool'] | json }}
  timezone: UTC
  dns_search: [{{ region }}.internal, internal]
  admin_email: ops@{{ region }}.internal
  motd: "{{ grains['id'] }} managed by salt"
  log_level: {{ salt['pillar.get']('log_level', 'info') }}
