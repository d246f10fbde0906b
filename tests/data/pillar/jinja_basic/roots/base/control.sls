{% set ns = namespace(count=0) %}
{% set acc = [] %}
{% for i in range(10) %}
{%   if i == 2 %}{% continue %}{% endif %}
{%   if i == 6 %}{% break %}{% endif %}
{%   do acc.append(i) %}
{%   set ns.count = ns.count + 1 %}
{% endfor %}
{% set d = {} %}
{% do d.update({'k1': 'v1'}) %}
control:
{% if grains['os_family'] == 'Debian' %}
  pkg: apache2
{% elif grains['os_family'] == 'RedHat' %}
  pkg: httpd
{% else %}
  pkg: unknown
{% endif %}
  loop_acc: {{ acc | json }}
  loop_count: {{ ns.count }}
  do_dict: {{ d | json }}
  users:
{% for u in ['alice', 'bob'] %}
    {{ u }}:
      uid: {{ 1000 + loop.index0 }}
      first: {{ loop.first }}
      home: /home/{{ u }}
{% endfor %}
{% if salt['grains.get']('role') == 'web' %}
  web_only: true
{% endif %}
  whitespace_test: "{{ '  x  ' | trim }}"
