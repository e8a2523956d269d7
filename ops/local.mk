# op plugins: one fragment per family
include %reldir%/math.mk
include %reldir%/nn.mk
include %reldir%/extend.mk
