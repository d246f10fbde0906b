{%- set run = salt['saltutil.runner'] %}
{%- set roles = run('mine.get', tgt='*', fun='role') %}
{%- set webs = run('mine.get', tgt='role:web', fun='role', tgt_type='grain') %}
{%- set multi = run('mine.get', tgt='*', fun='role,ident') %}
{%- set as_list = run('mine.get', tgt='web*', fun=['role']) %}
{%- set secret = run('mine.get', tgt='*', fun='secret') %}
{%- set compound = run('mine.get', tgt='G@role:db or L@web02', fun='ident', tgt_type='compound') %}
{%- set nomatch = run('mine.get', tgt='nosuch*', fun='role') %}
{%- set nofun = run('mine.get', tgt='*', fun='nosuch.fun') %}
{%- set by_arg = run('mine.get', arg=['db*', 'ident']) %}
{%- set local = salt['mine.get']('*', 'role') %}
mine:
  roles: {{ roles | json }}
  webs: {{ webs | json }}
  multi: {{ multi | json }}
  as_list: {{ as_list | json }}
  secret: {{ secret | json }}
  compound: {{ compound | json }}
  nomatch: {{ nomatch | json }}
  nofun: {{ nofun | json }}
  by_arg: {{ by_arg | json }}
  local: {{ local | json }}
  web_ids: {{ webs.keys() | sort | list | json }}
