++ new
select 1;
