devstuff: True
