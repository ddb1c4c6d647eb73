! The Fortran twin of tests/c/output_lines.c: output files written through rankmig
! (rankmig_open_output, rankmig_write_line), one line per iteration to out-RANK.txt on
! every rank and to all.txt on rank 0, so that after a migration or a restart each
! file must hold each iteration's line once, in order
! (tests/it/c_programs/output_files.rs). Written with `use mpi_f08` and rankmig_f08.
! Arguments: --iters K [--stop-file PATH] [--pause-us U] [--line-bytes B].
! Rank 0 prints "output-lines: N iterations" at the end.
program output_lines
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rankmig_f08
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  type(MPI_Comm) :: comm
  integer(c_int64_t), target :: iter
  integer(c_int64_t) :: iters, local(2), agreed(2)
  integer(c_int) :: mine, shared
  integer :: rank, provided, i, pause_us, line_bytes, ignored
  character(len=4096) :: arg, stop_file, path
  logical :: stopping

  iters = 1000
  pause_us = 0
  line_bytes = 0
  stop_file = ''
  do i = 1, command_argument_count() - 1, 2
    call get_command_argument(i, arg)
    select case (trim(arg))
    case ('--iters')
      call get_command_argument(i + 1, arg)
      read(arg, *) iters
    case ('--pause-us')
      call get_command_argument(i + 1, arg)
      read(arg, *) pause_us
    case ('--line-bytes')
      call get_command_argument(i + 1, arg)
      read(arg, *) line_bytes
    case ('--stop-file')
      call get_command_argument(i + 1, stop_file)
    end select
  end do

  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
  if (rankmig_init(comm) /= 0) call fail('rankmig_init')
  iter = 0
  if (rankmig_register_data('iter', c_loc(iter), int(8, c_size_t)) /= 0) &
       call fail('rankmig_register_data')
  call MPI_Comm_rank(comm, rank)
  write(path, '(a,i0,a)') 'out-', rank, '.txt'
  if (rankmig_open_output(trim(path), mine) /= 0) call fail('rankmig_open_output')
  shared = -1
  if (rank == 0) then
    if (rankmig_open_output('all.txt', shared) /= 0) call fail('rankmig_open_output')
  end if
  do while (iter < iters)
    comm = rankmig_comm()
    stopping = .false.
    if (rank == 0 .and. len_trim(stop_file) > 0) inquire(file=trim(stop_file), exist=stopping)
    local(1) = iter
    local(2) = merge(1_c_int64_t, 0_c_int64_t, stopping)
    call MPI_Allreduce(local, agreed, 2, MPI_INTEGER8, MPI_MAX, comm)
    if (agreed(2) /= 0) exit
    iter = iter + 1
    call write_line(mine, iter, .false., agreed(1))
    if (rank == 0) call write_line(shared, iter, .true., agreed(1))
    if (pause_us > 0) ignored = usleep(int(pause_us, c_int))
    if (rankmig_checkpoint() < 0) call fail('rankmig_checkpoint')
  end do
  if (rankmig_close_output(mine) /= 0) call fail('rankmig_close_output')
  if (rank == 0) then
    if (rankmig_close_output(shared) /= 0) call fail('rankmig_close_output')
    write(*, '(a,i0,a)') 'output-lines: ', iter, ' iterations'
    flush(6)
  end if
  if (rankmig_finalize() /= 0) call fail('rankmig_finalize')
  call MPI_Finalize()

contains

  !> Writes 'iteration I[ sum S]' padded with '.' to line_bytes bytes, and a newline.
  subroutine write_line(handle, n, with_sum, sum)
    integer(c_int), intent(in) :: handle
    integer(c_int64_t), intent(in) :: n, sum
    logical, intent(in) :: with_sum
    character(len=8192) :: line
    integer :: length
    if (with_sum) then
      write(line, '(a,i0,a,i0)') 'iteration ', n, ' sum ', sum
    else
      write(line, '(a,i0)') 'iteration ', n
    end if
    length = len_trim(line)
    if (line_bytes - 1 > length) then
      line(length + 1:line_bytes - 1) = repeat('.', line_bytes - 1 - length)
      length = line_bytes - 1
    end if
    if (rankmig_write_line(handle, line(1:length)) /= 0) call fail('rankmig_write_line')
  end subroutine write_line

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write(0, '(a,a,a,a)') 'output-lines-f: ', what, ': ', rankmig_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine fail

end program output_lines
