unicode:
  s: "héllo ☃"
  plain: café
  escaped: "\u00e9\t"
