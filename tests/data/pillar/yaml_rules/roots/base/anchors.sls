base_cfg: &base
  port: 80
  opts: [a, b]
anchors:
  copy: *base
  merged:
    <<: *base
    port: 8080
  multi_merge:
    <<: [*base, {extra: 1}]
  list_alias: &l [1, 2]
  list_again: *l
