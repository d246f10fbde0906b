hit:
  ng_webs: True
