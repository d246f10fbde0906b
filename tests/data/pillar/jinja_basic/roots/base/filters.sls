{% set data = {'b': [1, 2], 'a': 'str', 'c': {'n': none, 't': true}} %}
filters:
  json_inline: {{ data | json }}
  yaml_inline: {{ data | yaml }}
  yaml_flow_false: {{ data | yaml(False) | json }}
  yaml_encode_str: {{ "a: b # c" | yaml_encode }}
  yaml_encode_int: {{ 42 | yaml_encode }}
  yaml_encode_bool: {{ true | yaml_encode }}
  yaml_encode_none: {{ none | yaml_encode }}
  yaml_dquote: {{ 'he said "hi"\tnow' | yaml_dquote }}
  to_bool_yes: {{ 'yes' | to_bool }}
  to_bool_zero: {{ '0' | to_bool }}
  to_bool_one: {{ 1 | to_bool }}
  to_bool_true_str: {{ 'True' | to_bool }}
  to_bool_empty_list: {{ [] | to_bool }}
  unique: {{ grains['tags'] | default([]) | unique | json }}
  unique_literal: {{ ['z', 'a', 'z', 'b', 'a'] | unique | json }}
  sequence_str: {{ 'one' | sequence | json }}
  sequence_list: {{ ['one', 'two'] | sequence | json }}
  quote: {{ "it's a test" | quote | json }}
  quote_plain: {{ "plain" | quote | json }}
  regex_match: {{ 'web01' | regex_match('^(w)(eb)(\\d+)$') | json }}
  regex_match_none: {{ 'db01' | regex_match('^web') | json }}
  regex_search: {{ 'xx-web01-yy' | regex_search('web(\\d+)') | json }}
  regex_replace: {{ 'a1b22c333' | regex_replace('\\d+', '#') | json }}
  regex_replace_ic: {{ 'ABCabc' | regex_replace('b', '_', ignorecase=True) | json }}
  b64e: {{ 'hello world' | base64_encode }}
  b64d: {{ 'aGVsbG8gd29ybGQ=' | base64_decode }}
  md5: {{ 'hello' | md5 }}
  sha256: {{ 'hello' | sha256 }}
  sha512: {{ 'hello' | sha512 }}
  path_join: {{ '/etc' | path_join('salt', 'minion.d') }}
  path_join_abs: {{ '/etc' | path_join('/abs', 'x') }}
  to_num: {{ '42' | to_num | json }}
  json_of_id: {{ grains['id'] | json }}
  upper: {{ grains['id'] | upper }}
  join: {{ ['a', 'b'] | join(',') }}
  dict_to_sls_yaml_params: {{ {'name': 'x', 'val': 1} | dict_to_sls_yaml_params | json }}
