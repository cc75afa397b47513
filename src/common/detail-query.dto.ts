import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';

/** The query of a detail GET on a soft-deletable resource; anything else in it is a 400. */
export class DetailQueryDto {
  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'Return the record even if it is deleted (part 3)' })
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'include_deleted must be true or false' })
  include_deleted?: 'true' | 'false';
}
