{% set who = grains['id'] %}
vars:
  id: {{ grains['id'] }}
  id_quoted: "{{ who }}"
  opts_id: {{ opts['id'] }}
  minion_id: {{ minion_id | default('UNDEFINED') }}
  role: {{ salt['grains.get']('role', 'none') }}
  role_nested_default: {{ salt['grains.get']('nosuch:deep', 'dflt') }}
  saltenv: {{ saltenv | default('UNDEFINED') | json }}
  pillarenv: {{ pillarenv | default('UNDEFINED') | json }}
  pillarenv_is_none: {{ (pillarenv is none) | json }}
  sls: {{ sls | default('UNDEFINED') | json }}
  slspath: {{ slspath | default('UNDEFINED') | json }}
  tpldir: {{ tpldir | default('UNDEFINED') | json }}
  tplfile: {{ tplfile | default('UNDEFINED') | json }}
  tpldot: {{ tpldot | default('UNDEFINED') | json }}
  sls_path: {{ sls_path | default('UNDEFINED') | json }}
  slsdotpath: {{ slsdotpath | default('UNDEFINED') | json }}
  slscolonpath: {{ slscolonpath | default('UNDEFINED') | json }}
  pillar_seen_so_far: {{ pillar | json }}
  pillar_get_missing: {{ salt['pillar.get']('nosuch:key', 'fallback') }}
  pillar_get_override: {{ salt['pillar.get']('ovr:x', 'no-override') | json }}
  grains_get_list: {{ salt['grains.get']('tags', []) | json }}
  os_family_raw: {{ grains.os_family }}
