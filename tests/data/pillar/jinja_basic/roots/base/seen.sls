# rendered last: does `pillar` / pillar.get see the data of earlier sls files or the override?
seen:
  pillar_var: {{ pillar | json }}
  pillar_get_vars_id: {{ salt['pillar.get']('vars:id', 'not-visible') }}
  pillar_get_ovr: {{ salt['pillar.get']('ovr:x', 'not-visible') }}
  opts_minion_id: {{ opts.get('minion_id') | json }}
  opts_pillarenv: {{ opts.get('pillarenv') | json }}
  opts_saltenv: {{ opts.get('saltenv') | json }}
