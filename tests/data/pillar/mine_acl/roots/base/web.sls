{%- set peers = salt['saltutil.runner']('mine.get', tgt='role:web', fun='ident', tgt_type='grain') %}
upstream:
{%- for id, ident in peers | dictsort %}
  {{ id }}: {{ ident }}
{%- endfor %}
