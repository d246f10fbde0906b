blocks:
  literal: |
    line1
      indented
    line3
  folded: >
    folded
    text

    para
  strip: |-
    no newline
  keep: |+
    keep

  single: 'it''s'
  double: "tab\tnewline\nend"
