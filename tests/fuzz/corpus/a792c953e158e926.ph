ph.ctx.block.x
