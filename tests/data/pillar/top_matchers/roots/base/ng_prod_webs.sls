hit:
  ng_prod_webs: True
