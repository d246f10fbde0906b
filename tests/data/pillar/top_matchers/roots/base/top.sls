# matcher coverage; each sls sets key hit:<name>: True (merged) so the result lists what matched
include:
  - extra_top
base:
  '*':
    - common
    - 'users.*'
  'web*':
    - glob_web
  '^db\d+$':
    - match: pcre
    - pcre_db
  'web01,db01':
    - match: list
    - list_match
  'os_family:RedHat':
    - match: grain
    - grain_redhat
  'role:w.*':
    - match: grain_pcre
    - grain_pcre_web
  'G@role:web and L@web01,db01':
    - match: compound
    - compound_and
  'not G@role:web':
    - match: compound
    - compound_not
  'P@os_family:^Deb and E@web\d+':
    - match: compound
    - compound_pcre
  'webs':
    - match: nodegroup
    - ng_webs
  'prod_webs':
    - match: nodegroup
    - ng_prod_webs
  'listform':
    - match: nodegroup
    - ng_listform
  'I@common:flag:True':
    - match: compound
    - pillar_compound
  'common:flag:True':
    - match: pillar
    - pillar_match
  '10.0.0.0/8':
    - match: ipcidr
    - cidr_ten
  'S@192.168.0.0/16 or S@127.0.0.11':
    - match: compound
    - cidr_compound
  'db*':
    - missing_ignored
    - ignore_missing: True
  # the same target 'web02' also appears in extra_top.sls (included): the included top's list replaces this one
  'web02':
    - missing_not_ignored
  'L@web02':
    - match: compound
    - missing_not_ignored2
  '127.0.0.11':
    - match: ipcidr
    - cidr_single
{% if grains['os_family'] == 'Debian' %}
  'web01':
    - jinja_debian
{% endif %}
  # order: targets sorted by `order` (default 0) -> ordered_late (order 10) is merged after ordered_early (order -1)
  'G@env:prod':
    - match: compound
    - order: 10
    - ordered_late
  'G@env:*':
    - match: compound
    - order: -1
    - ordered_early
