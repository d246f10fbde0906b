#!yaml
scalars:
  yes_: yes
  no_: no
  on_: on
  off_: off
  y_: y
  n_: n
  Yes_cap: Yes
  TRUE_caps: TRUE
  True_cap: True
  octal_0755: 0755
  octal_010: 010
  octal_0o17: 0o17
  octal_08: 08
  hex: 0x1F
  sci: 1e3
  sci_float: 1.0e3
  sci_neg: 1.5e-2
  tilde: ~
  null_word: null
  Null_cap: Null
  empty:
  date: 2024-01-01
  datetime: 2024-01-01 12:30:00
  datetime_tz: 2024-01-01T12:30:00Z
  inf: .inf
  neg_inf: -.inf
  str_tag: !!str 0755
  str_tag_yes: !!str yes
  int_tag: !!int "42"
  float_tag: !!float "1"
  quoted: '0755'
  int_plain: 42
  neg_int: -7
  plus_int: +7
  float_plain: 3.14
  underscore_int: 1_000
  sexagesimal: 1:20
  leading_zero_float: 0.5
  dot_float: .5
  version_like: 1.10
  version_str: 1.2.3
  colon_str: a:b
  url: http://x/y
